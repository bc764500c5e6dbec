"""``deskpilot vault stats|gc|reset``: translate to :mod:`deskpilot.vault`."""

from __future__ import annotations

import json
from typing import Any

import typer

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.store.db import Database
from deskpilot.store.paths import vault_dir
from deskpilot.vault.service import SnapshotService, reset_vault
from deskpilot.vault.store import Vault

app = typer.Typer(help="The encrypted snapshot vault: usage, retention and cleanup.")


def _open() -> SnapshotService:
    try:
        return SnapshotService(Database(), Vault.open())
    except DeskpilotError as exc:
        typer.echo(f"error: {exc.code.value}: {exc.message}", err=True)
        raise typer.Exit(1) from None


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _print_stats(stats: dict[str, Any]) -> None:
    key = stats.get("key") or {}
    policy = stats["policy"]
    typer.echo(f"vault:        {stats['vaultDir']}")
    typer.echo(f"key:          {key.get('storage')} — {key.get('detail')}")
    typer.echo(
        f"usage:        {_size(stats['trackedBytes'])} tracked, {_size(stats['diskBytes'])} "
        f"on disk in {stats['files']} files; quota {_size(policy['quotaBytes'])}"
    )
    typer.echo(
        f"policy:       redactSensitiveContent={policy['redactSensitiveContent']} "
        f"fullRecordingEnabled={policy['fullRecordingEnabled']} "
        f"evidenceRetentionDays={policy['evidenceRetentionDays']}"
    )
    for row in stats["snapshots"]:
        typer.echo(f"snapshots:    {row['count']:>6} {row['kind']} ({row['retentionMode']})")
    for row in stats["blobs"]:
        typer.echo(f"blobs:        {row['count']:>6} {row['kind']} {_size(row['bytes'])}")
    if stats["pendingFileDeletes"]:
        typer.echo(f"pending:      {stats['pendingFileDeletes']} files to delete at next gc")


@app.command()
def stats(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show what the vault holds, where its key is, and the retention policy in force."""
    data = _open().stats()
    if as_json:
        typer.echo(json.dumps(data))
    else:
        _print_stats(data)


@app.command()
def gc(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Run maintenance now: expiry, quota eviction, deleted and orphan files."""
    report = _open().run_maintenance().to_json()
    if as_json:
        typer.echo(json.dumps(report))
        return
    typer.echo(
        f"expired {report['expiredSnapshots']}, evicted {report['evictedSnapshots']} snapshots; "
        f"removed {report['tombstonedFilesRemoved']} deleted and "
        f"{report['orphanFilesRemoved']} orphan files "
        f"({report['orphanFilesPending']} orphans inside the 24 h grace); "
        f"{_size(report['bytesBefore'])} → {_size(report['bytesAfter'])} "
        f"in {report['durationMs']:.1f} ms"
    )
    for err in report["errors"]:
        typer.echo(f"error: {err}", err=True)
    if report["errors"]:
        raise typer.Exit(1)


@app.command()
def reset(
    yes: bool = typer.Option(False, "--yes", help="Confirm: every snapshot is deleted."),
    new_key: bool = typer.Option(False, "--new-key", help="Also forget the installation key."),
) -> None:
    """Delete every snapshot and start an empty vault (the way out of a lost key)."""
    if not yes:
        typer.echo("error: this deletes every snapshot; pass --yes to confirm", err=True)
        raise typer.Exit(2)
    result = reset_vault(Database(), vault_dir(), new_key=new_key)
    typer.echo(f"deleted {result['snapshotsDeleted']} snapshots and {result['filesDeleted']} files")
