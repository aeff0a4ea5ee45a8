"""The pirex command line. `pirex --help` lists the commands; the Makefile calls these. This module is the click
group and the console script's main(); the commands are in the other modules of pirex/cli/, one per group, and are
added to the group here (they do not import this module)."""

from __future__ import annotations

import logging
import signal
import sys

import click

from pirex import __version__
from pirex.cli import artifact, calibrate, fleet, images, reproduce, results, run
from pirex.core.errors import PirexError

log = logging.getLogger("pirex")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pirex")
@click.option("-v", "--verbose", is_flag=True, help="Log every command pirex runs.")
def cli(verbose: bool) -> None:
    """pirex: replicable performance experiments for the Raspberry Pi, natively and in Docker."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="pirex: %(message)s", stream=sys.stderr
    )


for command in (
    run.run,
    run.service_cmd,
    run.compose_cmd,
    run.env_cmd,
    run.swarm_cmd,
    fleet.fleet,
    results.table,
    results.plot,
    results.compare,
    reproduce.reproduce,
    calibrate.calibrate,
    results.verify,
    results.machine,
    results.doctor,
    images.images,
    artifact.artifact_cmd,
):
    cli.add_command(command)


def _terminate(signum, _frame):
    # SIGTERM/SIGHUP unwind like Ctrl-C, so every daemon and container pirex started is stopped.
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("pirex: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except PirexError as e:
        click.echo(f"pirex: error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("pirex: interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # no input may end in a traceback: one line naming the problem (-v shows where)
        from pirex.core import errors

        if "-v" in sys.argv[1:2] or "--verbose" in sys.argv[1:2]:
            log.exception("the traceback:")
        click.echo(f"pirex: error: {errors.describe(e, sys.argv[1:])}", err=True)
        sys.exit(1)
