"""The correlator: identity -> clock -> detectors -> verdict (design.md sections 3-4).

Headless: never imports textual. The one entry point others use:

    from ranktrace.correlate import diagnose
    verdict = diagnose(con, offsets={"node3": 37.0})
"""

from .verdict import diagnose

__all__ = ["diagnose"]
