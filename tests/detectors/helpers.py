from ranktrace.correlate.clock import align

from correlate.fixtures import ev, steps, store  # noqa: F401  (re-exported)


def run(rule, events, facts=None, offsets=None):
    con = store(events, facts)
    align(con, offsets)
    return rule(con)
