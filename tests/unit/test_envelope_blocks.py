"""peel and blocks on tiny tables, through the real catalog."""

from ranktrace.samples import run_text


def events(catalog, text, envelopes=True):
    return run_text(catalog, text, envelopes=envelopes).events


def test_nested_envelopes_give_outer_identity_and_inner_body(catalog):
    text = "2026-03-02T03:17:41.200311002Z stderr F [rank13]:calefo8:55154:55833 [0] NCCL INFO proxy.cc:698 -> 6"
    ev = events(catalog, text).row(0, named=True)
    assert ev["rank"] == 13 and ev["host"] == "calefo8" and ev["format"] == "nccl"
    assert ev["envelopes"] == "cri>rank_prefix"
    assert ev["ts_kind"] == "envelope" and ev["ts"].isoformat().startswith("2026-03-02T03:17:41.200311")


def test_file_scoped_envelope_needs_to_dominate_the_file(catalog):
    labelled = "\n".join(f"{i % 4}: step {i} loss 0.5" for i in range(20))
    ev = events(catalog, labelled)
    assert ev["rank"].to_list() == [i % 4 for i in range(20)]
    plain = "step 1 loss 0.5\n" * 10 + "10: work = default_pg.broadcast([tensor], opts)\n"
    ev = events(catalog, plain)
    assert ev["rank"].null_count() == len(ev), "one stray 'N: ' line is not an srun label"


def test_interleaved_tracebacks_of_two_ranks_stay_apart(catalog):
    text = "\n".join([
        "[rank0]:Traceback (most recent call last):",
        "[rank1]:Traceback (most recent call last):",
        '[rank0]:  File "a.py", line 1, in <module>',
        '[rank1]:  File "b.py", line 2, in <module>',
        "[rank1]:RuntimeError: rank one failed",
        "[rank0]:ValueError: rank zero failed",
        "[rank0]:after the traceback",
    ])
    ev = events(catalog, text)
    tb = ev.filter(ev["pattern"] == "python_traceback.traceback").sort("rank")
    assert tb["rank"].to_list() == [0, 1]
    assert tb["message"].to_list() == ["ValueError: rank zero failed", "RuntimeError: rank one failed"]
    assert tb["line"].to_list() == [1, 2] and tb["end_line"].to_list() == [6, 5]
    assert "after the traceback" in ev["message"].to_list()


def test_lines_without_time_inherit_the_previous_time(catalog):
    text = "\n".join([
        "2020-03-24T14:09:46.884Z: [1,12]<stdout>:host1:1:2 [0] NCCL INFO a -> 3",
        "no time here",
    ])
    ev = events(catalog, text).sort("line")
    assert ev["ts_kind"].to_list() == ["collector", "interpolated"]   # mpirun's time: mpirun's clock
    assert ev["ts"][0] == ev["ts"][1]


def test_unclaimed_lines_are_kept_raw(catalog):
    ev = events(catalog, "something no format knows about 12345")
    assert ev["format"].to_list() == ["raw"] and ev["raw"][0] == "something no format knows about 12345"


def test_carried_identity_fills_the_section_and_stops_at_a_blank_line(catalog):
    text = "\n".join([
        "Name:           trainer-worker-3",
        "Namespace:      ml",
        "Containers:",
        "  pytorch:",
        "    Restart Count:  1",
        "",
        "unrelated line after the dump",
    ])
    ev = events(catalog, text).sort("line")
    section = ev.filter(ev["line"] <= 5)
    assert len(section) >= 3 and set(section["pod"].to_list()) == {"trainer-worker-3"}
    assert ev.filter(ev["line"] == 7)["pod"].to_list() == [None]


def test_a_new_section_ends_the_carried_container(catalog):
    """`end_carry`: the Events rows of a describe dump are about the pod, not
    about the last container listed above them."""
    text = "\n".join([
        "Name:           trainer-worker-3",
        "Containers:",
        "  pytorch:",
        "    Restart Count:  1",
        "Events:",
        "  Type     Reason     Age   From     Message",
        "  Warning  BackOff    2m    kubelet  Back-off restarting failed container",
    ])
    ev = events(catalog, text).sort("line")
    by_line = dict(zip(ev["line"].to_list(), ev["container"].to_list()))
    assert by_line[3] == "pytorch" and by_line[4] == "pytorch"
    assert by_line[5] is None and by_line[7] is None
    assert set(ev["pod"].to_list()) == {"trainer-worker-3"}


def test_a_glued_progress_bar_gives_the_same_progress_row_as_a_bar_alone(catalog):
    """tqdm_glued keeps its bar for its own fact: the progress row equals the
    one training_progress gives for the bar on a line of its own (the two
    regexes must not drift apart)."""
    bar = "Epoch 2:  13%|#3        | 65/500 [12:44<14:40, 4.11s/it, loss=0.36, lr=5e-6]"
    line = "n191-204-176:427053:441775 [0] NCCL INFO misc/socket.cc:829 -> 3"
    def rows(facts):  # the values a row has (a fact table's other columns are null)
        return [{k: v for k, v in r.items() if v is not None}
                for r in facts["progress"].drop("event_id", "file_id").to_dicts()]

    alone = rows(run_text(catalog, bar).facts)
    out = run_text(catalog, bar + line)
    glued = rows(out.facts)
    assert alone == glued == [{"epoch": 2, "step": 65, "total": 500, "loss": 0.36}]
    assert out.events["format"].to_list() == ["nccl"] and out.events["envelopes"].to_list() == ["tqdm_glued"]


def test_a_block_takes_its_time_from_its_own_text(catalog):
    text = "\n".join([
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2023-03-02_00:58:20",
        "  host      : gpu177.cluster.local",
        "  rank      : 4 (local_rank: 0)",
        "  exitcode  : 1 (pid: 15737)",
    ])
    ev = events(catalog, text).row(0, named=True)
    assert ev["kind"] == "failure_summary" and ev["end_line"] == 8
    assert (ev["ts"].isoformat(), ev["ts_kind"]) == ("2023-03-02T00:58:20", "local")


def test_srun_task_is_its_own_column_and_an_inner_rank_wins(catalog):
    """`srun --label torchrun`: the label is the task (a node's agent), the
    payload's [rankN]: is the rank; without one the task stands in for it."""
    text = "\n".join([
        "  1: [rank5]:[E1108 10:52:31.525000 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective "
        "operation timeout",
        "  0: [rank2]: step 40 loss 0.11",
        "  1: I1108 10:52:30.000000 torch/distributed/elastic/agent/server/api.py:12] starting workers",
        "  0: step 41 loss 0.10",
    ])
    ev = events(catalog, text).sort("line")
    assert ev["task"].to_list() == [1, 0, 1, 0]
    assert ev["rank"].to_list() == [5, 2, 1, 0]
    assert ev["envelopes"].to_list()[:2] == ["srun_label>rank_prefix"] * 2


def test_tracebacks_of_two_srun_tasks_stay_apart_and_keep_their_task(catalog):
    text = "\n".join([
        "0: Traceback (most recent call last):",
        "1: Traceback (most recent call last):",
        '0:   File "a.py", line 1, in <module>',
        '1:   File "b.py", line 2, in <module>',
        "1: RuntimeError: task one failed",
        "0: ValueError: task zero failed",
    ])
    tb = events(catalog, text).sort("rank")
    assert tb["rank"].to_list() == [0, 1]
    assert tb["message"].to_list() == ["ValueError: task zero failed", "RuntimeError: task one failed"]
