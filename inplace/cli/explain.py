"""`inplace explain ns/pod` and `inplace explain node/NAME`: why a resize is where it is."""

from __future__ import annotations

import sys

import typer

from inplace.cli.errors import fail, run_async
from inplace.cli.output import OUTPUT, check_format, print_document
from inplace.core.explain.nodestory import render_node
from inplace.core.explain.reader import explain_node, explain_pod
from inplace.core.explain.story import render
from inplace.core.settings import Settings


def explain_cmd(
    target: str = typer.Argument(..., help="<namespace>/<pod> or node/<name>"),
    resize: int | None = typer.Option(None, "--resize", min=1, help="only resize N (1 = first)"),
    at: int | None = typer.Option(
        None, "--at", min=0, help="as of this offset of the pod's partition"
    ),
    output: str = OUTPUT,
) -> None:
    """Tell, from the log, each resize of a pod: who asked, what changed, every kubelet
    decision with the inputs it was made on, what freed the room, how long each stage took,
    and where it is now. `node/NAME`: its capacity changes, evictions and starvation periods.

    Exit codes: 0 explained, 1 bad argument or unreachable Kafka, 2 bad option, 3 nothing on
    record for the target."""
    fmt = check_format(output)
    if target.count("/") != 1 or not all(target.split("/")):
        raise fail(f"{target!r} is neither <namespace>/<pod> nor node/<name>")
    kind, name = target.split("/")
    s = Settings()
    if kind == "node":
        node = run_async(explain_node(s.kafka_bootstrap, name, s.topic_prefix))
        if not node.changes and not node.starvation and not node.evictions:
            raise fail(f"nothing on record for node {name}", code=3)
        if not print_document(node.model_dump(mode="json"), fmt):
            sys.stdout.write("\n".join(render_node(node)) + "\n")
        return
    story, events = run_async(explain_pod(s.kafka_bootstrap, kind, name, s.topic_prefix, at))
    if events == 0:
        raise fail(f"no events for pod {target} in the log", code=3)
    if resize is not None:
        if resize > len(story.resizes):
            raise fail(f"pod {target} has {len(story.resizes)} resizes on record, not {resize}")
        story.resizes = [story.resizes[resize - 1]]
    if not print_document(story.model_dump(mode="json"), fmt):
        sys.stdout.write("\n".join(render(story)) + "\n")
