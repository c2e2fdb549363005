"""The analysis floor: what is decided from the IR alone before anything runs (no torch, no LSP).

Between ``ir`` (the dump language) and ``exec`` (running it): the plans of the batched loops
(:mod:`.batching_plan` K-chunk accumulations, :mod:`.pipebatch_plan` pipe loops, :mod:`.sweep_plan`
sweeps), each with its run-time half in ``exec`` of the same stem; :mod:`.lowering` takes them
and decides, per function and loop, what the generated script does (``exec.codegen`` prints it).
:mod:`.task_batch_plan` decides, per orchestrator loop, whether all its tasks could run as one batch
(the first step of the task-batching executor of ``docs/speed.md``); the lowering uses it for the
K-chunk products a push loop may make for every task at once.
"""
