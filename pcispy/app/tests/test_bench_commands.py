# SPDX-License-Identifier: BSD-2-Clause
"""The README commands ``make bench`` times (pcispy/app/bench.py's SIM_COMMANDS) still
parse as the CLI reads them, and each of their two runs writes files of its own (the
CLI refuses to overwrite a capture, which stopped the measurement once)."""

import pytest

from pcispy.app import cli
from pcispy.app.bench import SIM_COMMANDS, sim_command


@pytest.mark.parametrize("name", sorted(SIM_COMMANDS))
def test_timed_command_parses_and_each_run_has_its_own_files(name, tmp_path):
    parser = cli.build_parser()
    first, second = (sim_command(name, tmp_path, run) for run in range(2))
    for argv in (first, second):
        parser.parse_args(cli.bare_sim_is_ideal(argv))
    outputs = [(a, b) for a, b in zip(first, second) if a != b]
    assert outputs and all(str(tmp_path) in a and str(tmp_path) in b for a, b in outputs)
    assert not {a for a, _ in outputs} & {b for _, b in outputs}
