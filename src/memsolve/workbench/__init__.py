"""The retrieval workbench (seed 004, DESIGN §14): a local page over the real engine.

``memsolve workbench --policy P --records R`` serves it (:mod:`memsolve.cli.workbench`). The
page renders what :mod:`.bench` computes with the CLI's own pipeline; :mod:`.knobs` turns its
form fields into edits of the policy text; :mod:`.app` is the starlette app. Needs the
``workbench`` extra (starlette, uvicorn, ruamel.yaml); nothing here is imported by the core.
"""
