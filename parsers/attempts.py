"""Attempts: one log can hold several runs of the same job (elastic restarts, resumed runs).

Lines that start a new attempt::

    [INFO] Restarting worker group                                   # torchrun / elastic agent
    ***** Running training *****                                     # HF Trainer (a second time)
    Restoring states from the checkpoint path at ckpt/last.ckpt      # Lightning
    Resuming training from checkpoint-500                            # HF and scripts

A marker only opens a new attempt once the current one has logged something, so the several
markers one restart prints count once.
"""

from __future__ import annotations

TRIGGERS = {
    "attempt_start": (
        r"Restarting worker group|\*\*\*\*\* Running training \*\*\*\*\*"
        r"|Restoring states from the checkpoint|(?i:resuming (?:training )?from (?:the )?checkpoint)"
    ),
}
