"""``workbench``: the retrieval workbench of seed 004 as a local page (DESIGN §14)."""

from __future__ import annotations

import ipaddress
import socket

import click

from .common import guarded, long_running


@click.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
              help="Policy YAML file (`-`: standard input).")
@click.option("--records", "records_path", type=click.Path(dir_okay=False),
              help="Records file (.json, .jsonl, .yaml; not `-`: the saved policy names it); "
                   "default: the policy's `records:`.")
@click.option("--labelled", "labelled_path", type=click.Path(dir_okay=False),
              help="Labelled queries (kind: LabelledQueries): the page counts the supporting facts the tray covers.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback shows the page to the network.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: any free port; the address is printed).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Another name the page answers to in a request's Host header (repeatable); loopback, --host "
                   "and, for 0.0.0.0 or ::, the machine's own names and addresses are accepted already.")
@guarded
def workbench(policy_path: str, records_path: str | None, labelled_path: str | None, host: str, port: int,
              allow_hosts: tuple[str, ...]) -> None:
    """Serve the retrieval workbench: a local page over the real engine (the `workbench` extra).

    The page shows seed 004's experiment on the policy and records given: knobs, the four
    stages, every record's outcome and reason, baseline, notebook, exact against greedy, the
    frontier and the policy as YAML. It runs the same pipeline as `memsolve --policy`; "save as
    policy" downloads the YAML that reproduces the page with `memsolve --policy FILE`.
    """
    try:
        import uvicorn

        from ..workbench.app import create_app, served_hosts
        from ..workbench.bench import open_bench
    except ModuleNotFoundError as error:
        raise click.UsageError(f"the workbench needs `pip install 'memsolve[workbench]'` "
                               f"(missing `{error.name}`)") from None
    if records_path == "-":  # "save as policy" writes a file that names the records by path
        raise click.UsageError("--records - is standard input; the workbench's saved policy names its records "
                               "file: name a file")
    bench = open_bench(policy_path, records_path, labelled_path)
    listener = _listen(host, port)
    bound = listener.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    if not _loopback(host):
        names = ", ".join(served_hosts(host, allow_hosts))
        click.echo(f"warning: listening on {host}: anyone who can reach this machine can use the page "
                   f"(as a Host it accepts: {names}; more with --allow-host)", err=True)
    click.echo(f"memsolve workbench: http://{shown}:{bound[1]}/  (Ctrl-C stops it)", err=True)
    long_running()
    config = uvicorn.Config(create_app(bench, host, allow_hosts), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[listener])


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts, so that a taken port is one line."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as error:
        # a usage error (one line, exit 2): the address the user asked for is not available
        raise click.UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    listener.set_inheritable(True)
    return listener


COMMANDS = (workbench,)
