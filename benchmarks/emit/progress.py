"""Training progress, checkpoint save and resume lines of the common ways to train.

Each style says which ranks print progress ('all', 'rank0' or 'last'), and gives the progress line of one
step, the lines of a checkpoint save, and the lines a resumed run prints when it loads its checkpoint (the
step then goes back to the checkpoint's step). save/fresh/resume return (seconds after t, line) pairs: the
line's own time is t plus those seconds.

Sources:
- pylog: Python logging '%(asctime)s - %(levelname)s - %(name)s - %(message)s' (CPython), the message of a
  plain training script (gen_noisy.py); resume in the words of pytorch/examples imagenet/main.py
  ("=> loading checkpoint '{}'", "=> loaded checkpoint '{}' (epoch {})").
- plain: print('step N loss X step_time Ys') (sample_logs captures; no timestamp).
- hf: huggingface/transformers trainer.py: the log dict printed by the progress callback
  ("{'loss': .., 'grad_norm': .., 'learning_rate': .., 'epoch': ..}"), 'Saving model checkpoint to %s',
  '  Continuing training from checkpoint, will skip to saved global_step', '  Continuing training from
  epoch %d', '  Continuing training from global step %d', '***** Running training *****', through the
  example scripts' logging format '%(asctime)s - %(levelname)s - %(name)s - %(message)s' with datefmt
  '%m/%d/%Y %H:%M:%S'.
- hf_bar (asked for by name only): the HF Trainer's console, trainer_callback.py ProgressCallback: its tqdm bar
  (tqdm(total=state.max_steps, dynamic_ncols=True): ' 12%|█▏        | 120/1000 [01:00<07:20,  2.00it/s]', tqdm's
  default l_bar/r_bar, one bar per launch) and, every few steps, the log dict it writes above the bar.
- lightning: Lightning-AI/pytorch-lightning: the tqdm progress bar 'Epoch 3:  45%|...| 450/1000 [07:30<09:10,
  1.00it/s, v_num=0, train_loss=2.31]', checkpoint_connector.py 'Restoring states from the checkpoint
  path at %s', 'Restored all states from the checkpoint at %s'.
- titan: pytorch/torchtitan torchtitan/tools/logging.py '[titan] %(asctime)s - %(name)s - %(levelname)s -
  %(message)s', components/metrics.py 'step: %2d  loss: %8.5f  grad_norm: %7.4f  memory: %5.2fGiB(%.2f%%)
  tps: %s  tflops: %s  mfu: %s' (colour disabled), components/checkpointer/dcp.py 'Saving the checkpoint.',
  'Finished saving the checkpoint in %.2f seconds.', 'Loading the checkpoint from %s.', 'Finished loading
  the checkpoint in %.2f seconds.'.
- deepspeed: deepspeedai/DeepSpeed utils/logging.py '[%(asctime)s] [%(levelname)s]
  [%(filename)s:%(lineno)d:%(funcName)s] %(message)s' with log_dist's '[Rank 0] ' (line 123),
  runtime/engine.py 'step=%d, skipped=%d, lr=%s, mom=%s' and 'Saving model checkpoint: %s',
  checkpoint_engine/torch_checkpoint_engine.py '[Torch] Begin Load checkpoint from %s...' / '[Torch] End
  Load checkpoint from %s...'.
- megatron (HELD OUT): NVIDIA/Megatron-LM megatron/training/training.py training_log (' [%Y-%m-%d
  %H:%M:%S.%f] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f |
  learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f |
  number of skipped iterations: %3d | number of nan iterations: %3d |', printed by the last rank),
  checkpointing.py (' loading distributed checkpoint from %s at iteration %d', '  successfully loaded
  checkpoint from %s [ t %d/%d, gtp_remat %d/%d, p %d/%d ] at iteration %d', '[%s] saving checkpoint at
  iteration %7d to %s in %s format').
"""

from __future__ import annotations

import datetime as dt

from . import timefmt


def _interval(s: int) -> str:
    """tqdm's format_interval: [H:]MM:SS."""
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _meter(left: str, pct: float, n: int, total: int, elapsed: int, remaining: int, rate: str) -> str:
    """A tqdm bar: `left` (description and percentage), a 10-cell bar, 'n/total [elapsed<remaining, rate]'."""
    return (f"{left}|{'█' * int(pct // 10):<10}| {n}/{total} [{_interval(elapsed)}<{_interval(remaining)}, "
            f"{rate}]")


class Style:
    name = "pylog"
    ranks = "all"
    heldout = False
    bar_per_epoch = True    # a progress bar (its elapsed) starts again at each epoch, as Lightning's does

    def __init__(self, ckpt_dir: str, total_steps: int, steps_per_epoch: int):
        self.ckpt = ckpt_dir
        self.total = total_steps
        self.per_epoch = steps_per_epoch

    def step(self, t: dt.datetime, step: int, loss: float, step_time: float, since: dt.datetime) -> str:
        """Step `step`'s progress line, written at `t` (the writer's clock), `since` the moment its progress bar
        started on the same clock (a bar's elapsed: Lightning's, reset at each epoch's start)."""
        return (f"{timefmt.py(t)} - INFO - train - step {step} | loss {loss:.4f} | lr 3.0e-04 | "
                f"step_time {step_time:.2f}s")

    def ckpt_path(self, step: int) -> str:
        return f"{self.ckpt}/step_{step:07d}.pt"

    def save(self, t: dt.datetime, step: int) -> list[tuple[float, str]]:
        return [(0, f"{timefmt.py(t)} - INFO - train - => saving checkpoint '{self.ckpt_path(step)}'")]

    def fresh(self, t: dt.datetime) -> list[tuple[float, str]]:
        return [(0, f"{timefmt.py(t)} - INFO - train - => no checkpoint found at '{self.ckpt}', starting from step 0")]

    def resume(self, t: dt.datetime, step: int) -> list[tuple[float, str]]:
        p = self.ckpt_path(step)
        return [(0, f"{timefmt.py(t)} - INFO - train - => loading checkpoint '{p}'"),
                (4.2, f"{timefmt.py(t + dt.timedelta(seconds=4.2))} - INFO - train - => loaded checkpoint '{p}' "
                      f"(epoch {step // self.per_epoch})")]


class Plain(Style):
    name = "plain"

    def step(self, t, step, loss, step_time, since):
        return f"step {step} loss {loss:.4f} step_time {step_time:.2f}s"

    def save(self, t, step):
        return [(0, f"saved checkpoint {self.ckpt_path(step)}")]

    def fresh(self, t):
        return [(0, "no checkpoint found, training from scratch")]

    def resume(self, t, step):
        return [(0, f"resuming from checkpoint {self.ckpt_path(step)} at step {step}")]


class HF(Style):
    name = "hf"
    ranks = "rank0"

    def _log(self, t, msg, name="transformers.trainer"):
        return f"{timefmt.py_mdy(t)} - INFO - {name} - {msg}"

    def step(self, t, step, loss, step_time, since):
        return (f"{{'loss': {loss:.4f}, 'grad_norm': {0.8 + (step % 17) / 40:.4f}, 'learning_rate': "
                f"{3e-4 * (1 - step / max(self.total, 1)):.4e}, 'epoch': {step / self.per_epoch:.2f}}}")

    def ckpt_path(self, step):
        return f"{self.ckpt}/checkpoint-{step}"

    def save(self, t, step):
        return [(0, self._log(t, f"Saving model checkpoint to {self.ckpt_path(step)}"))]

    def _running(self, t):
        return [(0, self._log(t, "***** Running training *****")), (0, self._log(t, "  Num examples = 4,096,000")),
                (0, self._log(t, f"  Num Epochs = {max(1, self.total // self.per_epoch)}")),
                (0, self._log(t, f"  Total optimization steps = {self.total:,}"))]

    def fresh(self, t):
        return self._running(t)

    def resume(self, t, step):
        return self._running(t) + [
            (0, self._log(t, "  Continuing training from checkpoint, will skip to saved global_step")),
            (0, self._log(t, f"  Continuing training from epoch {step // self.per_epoch}")),
            (0, self._log(t, f"  Continuing training from global step {step}")),
            (0, self._log(t, f"  Will skip the first {step // self.per_epoch} epochs then the first "
                             f"{step % self.per_epoch} batches in the first epoch."))]


class HFBar(HF):
    """The HF Trainer as a console shows it: its ProgressCallback's tqdm bar (tqdm(total=max_steps), no
    description, one bar per launch: it does not restart at an epoch; on a resume its first update jumps to the
    checkpoint's step) with the log dicts it writes above the bar (tqdm.write) every `DICT_EVERY` steps. Not in any
    layout's draw (the sets of every seed stay as they were): asked for by name (`--progress hf_bar`)."""
    name = "hf_bar"
    bar_per_epoch = False
    DICT_EVERY = 10

    def step(self, t, step, loss, step_time, since):
        if step % self.DICT_EVERY == 0:
            return super().step(t, step, loss, step_time, since)
        pct = 100 * step / max(self.total, 1)
        rate = f"{1 / step_time:5.2f}it/s" if step_time <= 1 else f"{step_time:5.2f}s/it"
        return _meter(f"{pct:3.0f}%", pct, step, self.total, int((t - since).total_seconds()),
                      int((self.total - step) * step_time), rate)


class Lightning(Style):
    name = "lightning"
    ranks = "rank0"

    def step(self, t, step, loss, step_time, since):
        e, i = divmod(step, self.per_epoch)
        pct = int(100 * i / self.per_epoch)
        el = int((t - since).total_seconds())   # tqdm's elapsed: format_interval(now - start_t)
        return _meter(f"Epoch {e}:  {pct:>2d}%", pct, i, self.per_epoch, el, int((self.per_epoch - i) * step_time),
                      f"{1 / step_time:.2f}it/s, v_num=0, train_loss={loss:.3f}")

    def ckpt_path(self, step):
        return f"{self.ckpt}/epoch={step // self.per_epoch}-step={step}.ckpt"

    def save(self, t, step):
        return []          # ModelCheckpoint saves silently at INFO

    def fresh(self, t):
        return []

    def resume(self, t, step):
        p = self.ckpt_path(step)
        return [(0, f"Restoring states from the checkpoint path at {p}"),
                (5.1, f"Restored all states from the checkpoint at {p}")]


class Titan(Style):
    name = "titan"

    def _log(self, t, msg):
        return f"[titan] {timefmt.py(t)} - root - INFO - {msg}"

    def step(self, t, step, loss, step_time, since):
        tps = int(8192 / step_time)
        return self._log(t, f"step: {step:2}  loss: {loss:8.5f}  grad_norm: {0.8 + (step % 13) / 30:7.4f}  "
                            f"memory: 61.27GiB(77.44%)  tps: {tps:,}  tflops: {tps * 0.0275:,.2f}  mfu: "
                            f"{tps * 0.00278:.2f}%")

    def ckpt_path(self, step):
        return f"{self.ckpt}/step-{step}"

    def save(self, t, step):
        return [(0, self._log(t, "Saving the checkpoint.")),
                (11.31, self._log(t + dt.timedelta(seconds=11.31), "Finished saving the checkpoint in 11.31 seconds."))]

    def fresh(self, t):
        return [(0, self._log(t, f"Checkpointing active. Checkpoints will be loaded from and saved to {self.ckpt}")),
                (0, self._log(t, "No checkpoint was provided, this is a fresh start."))]

    def resume(self, t, step):
        return [(0, self._log(t, f"Checkpointing active. Checkpoints will be loaded from and saved to {self.ckpt}")),
                (0, self._log(t, f"Loading the checkpoint from {self.ckpt_path(step)}.")),
                (6.41, self._log(t + dt.timedelta(seconds=6.41), "Finished loading the checkpoint in 6.41 seconds."))]


class DeepSpeed(Style):
    name = "deepspeed"
    ranks = "rank0"

    def _log(self, t, src, msg, rank0=True):
        return f"[{timefmt.py(t)}] [INFO] [{src}] " + ("[Rank 0] " if rank0 else "") + msg

    def step(self, t, step, loss, step_time, since):
        return self._log(t, "logging.py:123:log_dist", f"step={step}, skipped=0, lr=[0.0003], mom=[(0.9, 0.95)]")

    def ckpt_path(self, step):
        return f"{self.ckpt}/global_step{step}/mp_rank_00_model_states.pt"

    def save(self, t, step):
        return [(0, self._log(t, "logging.py:123:log_dist", f"Saving model checkpoint: {self.ckpt_path(step)}"))]

    def fresh(self, t):
        return []

    def resume(self, t, step):
        p = self.ckpt_path(step)
        return [(0, self._log(t, "logging.py:123:log_dist", f"[Torch] Begin Load checkpoint from {p}...")),
                (3.9, self._log(t + dt.timedelta(seconds=3.9), "logging.py:123:log_dist",
                                f"[Torch] End Load checkpoint from {p}..."))]


class Megatron(Style):
    """HELD OUT: only with --heldout."""
    name = "megatron"
    ranks = "last"
    heldout = True

    def step(self, t, step, loss, step_time, since):
        return (f" [{timefmt.iso_us(t)}] iteration {step:8d}/{self.total:8d} | consumed samples: {step * 512:12d} | "
                f"elapsed time per iteration (ms): {step_time * 1000:.1f} | learning rate: {3e-4:.6E} | "
                f"global batch size: {512:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
                f"{0.8 + (step % 11) / 20:.3f} | number of skipped iterations: {0:3d} | number of nan iterations: "
                f"{0:3d} |")

    def ckpt_path(self, step):
        return self.ckpt

    def save(self, t, step):
        return [(0, f"[{timefmt.iso_us(t)}] saving checkpoint at iteration {step:7d} to {self.ckpt} in torch_dist "
                    "format")]

    def fresh(self, t):
        return [(0, "WARNING: could not find the metadata file " + self.ckpt + "/latest_checkpointed_iteration.txt"),
                (0, "    will not load any checkpoints and will start from random")]

    def resume(self, t, step):
        return [(0, f" loading distributed checkpoint from {self.ckpt} at iteration {step}"),
                (8.7, f"  successfully loaded checkpoint from {self.ckpt} [ t 1/1, gtp_remat 1/1, p 1/1 ] at "
                      f"iteration {step}")]


STYLES = {c.name: c for c in (Style, Plain, HF, HFBar, Lightning, Titan, DeepSpeed, Megatron)}
