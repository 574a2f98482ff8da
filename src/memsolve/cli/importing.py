"""``import``: records from mem0, LangGraph, Letta and Graphiti exports (DESIGN §12)."""

from __future__ import annotations

import click

from ..adapters import SOURCES, Options, import_file
from .common import check_outputs, guarded, write_output


@click.command("import")
@click.argument("source", type=click.Choice(list(SOURCES)))
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--tenant", help="One tenant for every record (instead of the source's tenant field).")
@click.option("--tenant-from", metavar="FIELD", help="Source field that holds the tenant: `metadata.user`, "
                                                     "`namespace.1`.")
@click.option("--key-from", metavar="FIELD", help="Source field that holds the fact key (for latest-key).")
@click.option("--text-from", metavar="FIELD", help="Source field that holds the text: `value.summary`.")
@click.option("--store", help="One store for every record.")
@click.option("--ttl", metavar="DURATION", help="Freshness window (`30m`, `7d`) where the source gives no expiry.")
@click.option("--omit", metavar="FIELD", multiple=True,
              help="Source field to leave out of metadata (repeatable): `fact_embedding`.")
@click.option("--skip-unmappable", is_flag=True,
              help="Leave out items that cannot be mapped (counted and named in the summary) instead of failing.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the records here (atomically).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def import_records(source, file, tenant, tenant_from, key_from, text_from, store, ttl, omit, skip_unmappable, out,
                   force) -> None:
    """Records (JSON Lines) from a mem0, LangGraph, Letta or Graphiti export.

    FILE is what the source itself serializes, as JSON (an array, or an object holding it under
    `results`, `items` or `memories`) or JSON Lines; `-` reads standard input. Source fields no
    record field takes go to each record's `metadata`; an item that cannot be mapped is an error
    naming its position. The records go to standard output (or --out); one summary line goes to
    standard error.
    """
    if out is not None and file != "-":
        check_outputs({"--out": out}, [("FILE", file)])
    options = Options(tenant=tenant, tenant_from=tenant_from, key_from=key_from, text_from=text_from, store=store,
                      ttl=ttl, omit=tuple(omit), skip_unmappable=skip_unmappable)
    imported = import_file(source, file, options)
    write_output(imported.jsonl(), out, force)
    click.echo(imported.summary("standard input" if file == "-" else file), err=True)


COMMANDS = (import_records,)
