# SPDX-License-Identifier: BSD-2-Clause
"""The command line's manners: every command's ``--help`` has examples that parse; invalid
arguments end with a usage line and exit 2 (argparse's checks and the commands' own);
expected failures (missing device, damaged file, refused setting, Ctrl-C, a closed pipe)
end in one line without a traceback, ``--verbose`` adds details; an unexpected exception
is one line naming a bug, exit 1, its traceback only with ``--verbose``."""

import contextlib
import io
import os
import shlex
import subprocess
import sys

import pytest

from pcispy.app import cli
from pcispy.host.errors import EXIT_BUG, RefusedSetting

from pcispy.app.tests._cli import run_cli

pytestmark = pytest.mark.host

#: A PCI address no machine has.
ABSENT_BDF = "0000:ff:1f.7"
#: Shell syntax that ends the pcispy part of an example line.
_SHELL = ("|", ">", "&&", ";", "<")



@pytest.fixture
def no_board(tmp_path, monkeypatch):
    """An empty sysfs tree (no device at any address) and no simulator."""
    (tmp_path / "sysfs").mkdir()
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(tmp_path / "sysfs"))
    monkeypatch.setenv("PCISPY_DEV_ROOT", str(tmp_path / "dev"))
    import pcispy.sim.launcher

    def no_simulator(*args, **kwargs):
        raise AssertionError("this test must not start the simulator")
    monkeypatch.setattr(pcispy.sim.launcher, "run_feature", no_simulator)
    return tmp_path


def _example_argv(example):
    """The pcispy arguments of an example line (up to the first shell operator)."""
    words = []
    for word in shlex.split(example):
        if word in _SHELL or word.startswith((">", "|")):
            break
        words.append(word)
    assert words[0] == "pcispy", example
    return cli.bare_sim_is_ideal(words[1:])


COMMANDS = [command.name for command in cli.commands()]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_examples_that_parse(name):
    status, text, err = run_cli(name, "--help")
    assert status == 0 and err == ""
    assert text.startswith(f"usage: pcispy {name}")
    section = text.split("\nExamples:\n", 1)
    assert len(section) == 2, f"pcispy {name} --help has no Examples section"
    examples = [line.strip() for line in section[1].splitlines() if line.strip()]
    assert examples and all(line.startswith("pcispy ") for line in examples)
    parser = cli.build_parser()
    own = 0
    for example in examples:
        args = parser.parse_args(_example_argv(example))      # SystemExit on a bad one
        own += args.command == name
    assert own, f"no example of pcispy {name} runs {name}"


def test_top_level_help_has_examples_and_every_command():
    status, text, _ = run_cli("--help")
    assert status == 0
    assert "\nExamples:\n  pcispy " in text
    for name in COMMANDS:
        assert f"\n    {name} " in text or f"\n    {name}\n" in text, name


def test_output_options_also_after_the_command():
    before = run_cli("--json", "check", "--list-rules")
    after = run_cli("check", "--list-rules", "--json")
    assert before[0] == after[0] == 0 and before[1] == after[1] and before[1].startswith("{")
    # Not given after the command, the value before it stands.
    args = cli.build_parser().parse_args(["--json", "--verbose", "check"])
    assert args.json and args.verbose
    args = cli.build_parser().parse_args(["check", "-v"])
    assert args.verbose and not args.json


@pytest.mark.parametrize("argv, says", [
    (["dma", "--len", "1Q"], "argument --len/--size: '1Q' is not a size"),
    (["dma", "--addr", "-1"], "a bus address is 0 .. 2**64-1"),
    (["dma", "--timeout", "nan"], "argument --timeout: nan: give a positive, finite"),
    (["dma", "--cmd", "XX"], "argument --cmd: invalid choice: 'XX'"),
    (["sweep", "--cmds", "MW,XX"], "unknown command(s) 'XX'"),
    (["sweep", "--bursts", "1,x"], "is not a comma-separated list of numbers"),
    (["irq", "--count", "0"], "0 is outside 1 .. 2**32-1"),
    (["target", "--abort", "12"], "is not FIRST:LAST"),
    (["target", "--ack64", "maybe"], "give on or off"),
    (["pio", "--size=-4K"], "a size cannot be negative"),
    (["decode", "x.pcitrace", "--latency-timer", "256"], "256 is outside 0..255"),
    (["decode", "x.pcitrace", "--format", "pdf"], "invalid choice: 'pdf'"),
    (["decode"], "the following arguments are required: file"),
    (["capture"], "the following arguments are required: -o/--output"),
    (["capture", "-o", "x.pcitrace", "--pre", "-1"], "argument --pre: -1 is outside "
                                                     "0..4294967295"),
    (["capture", "-o", "x.pcitrace", "--duration", "0"], "argument --duration: 0: give a"),
    # capture's own checks of its specs, before any board or simulator starts.
    (["capture", "-o", "x.pcitrace", "--filter", "io:0x70/zz"],
     "--filter 'io:0x70/zz': '0x70/zz' is not VALUE or VALUE/MASK"),
    (["capture", "-o", "x.pcitrace", "--trigger", "sometimes"],
     "--trigger 'sometimes': give one of now, filter, register, violation"),
    (["capture", "-o", "x.pcitrace", "--violations", "nope"],
     "--violations 'nope': no checker rule 'nope'"),
    (["capture", "-o", "x.pcitrace", "--ring"], "a --ring capture triggered 'now' never "
                                                "stops by itself"),
    (["--sysfs", ABSENT_BDF, "report", "-o", ""], "-o '': No such file or directory"),
    # The commands' own checks after parsing end the same way.
    (["check", "--list-rules", "--duration", "1"], "--list-rules reads no board"),
    (["--sysfs", ABSENT_BDF, "stats", "--samples", "0"], "--samples 0: give at least 1"),
    (["--sysfs", ABSENT_BDF, "stats", "--interval", "0"], "argument --interval: 0: give a"),
])
def test_invalid_arguments_end_with_a_usage_line(no_board, argv, says):
    status, out, err = run_cli(*argv)
    name = next(word for word in argv if word in COMMANDS)
    lines = err.splitlines()
    assert status == 2 and out == ""
    assert lines[0].startswith(f"usage: pcispy {name} ")
    assert lines[-1].startswith(f"pcispy {name}: error: ") and says in lines[-1], err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, says", [
    (["--bus-width", "48", "info"], "argument --bus-width: invalid choice: 48 (choose from "
                                    "32, 64)"),
    (["--sysfs", "3:0.0", "info"], "argument --sysfs: '3:0.0' is not a PCI address; give "
                                   "DOMAIN:BUS:DEVICE.FUNCTION in hex, e.g. 0000:03:00.0 "
                                   "(pcispy list shows boards)"),
    (["--sysfs", "", "info"], "argument --sysfs: '' is not a PCI address; give "
                              "DOMAIN:BUS:DEVICE.FUNCTION in hex, e.g. 0000:03:00.0 (pcispy "
                              "list shows boards)"),
    (["--sysfs", ABSENT_BDF, "--buffer", "0x123:0", "dma"],
     "argument --buffer: --buffer '0x123:0': the range must be page aligned and not empty"),
])
def test_invalid_global_option_ends_with_the_usage_line(no_board, argv, says):
    status, out, err = run_cli(*argv)
    lines = err.splitlines()
    assert (status, out) == (2, "") and lines[0].startswith("usage: pcispy [-h]")
    assert lines[-1] == f"pcispy: error: {says}", err


BOARD_COMMANDS = [["info"], ["config", "--lspci"], ["regs"], ["check"], ["dma"], ["sweep"],
                  ["irq"], ["target", "--show"], ["pio"], ["stats"], ["stats", "--watch"],
                  ["capture", "-o", "x.pcitrace"]]


@pytest.mark.parametrize("command", BOARD_COMMANDS, ids=" ".join)
def test_missing_device_is_one_line(no_board, command):
    status, out, err = run_cli("--sysfs", ABSENT_BDF, *command)
    assert status == 2 and out == ""
    assert err == (f"pcispy: error: no PCI device {ABSENT_BDF} (nothing at "
                   f"{no_board / 'sysfs' / ABSENT_BDF}); `pcispy list` shows the boards in "
                   "this machine\n")


def test_missing_serial_port_is_one_line(no_board):
    status, out, err = run_cli("--uart", str(no_board / "ttyNONE"), "info")
    assert status == 2 and out == ""
    assert err.startswith("pcispy: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def _feature_raises(monkeypatch, error):
    """Make every feature on --sysfs raise ``error`` (as a board would, from inside)."""
    import pcispy.host.transports.sysfs

    def run(feature, arguments, bdf, buffer=None):
        raise error
    monkeypatch.setattr(pcispy.host.transports.sysfs, "run", run)


def test_refused_setting_is_one_line(no_board, monkeypatch):
    _feature_raises(monkeypatch, RefusedSetting("the board refused the target settings: "
                                                "initial latency above 16 clocks"))
    status, out, err = run_cli("--sysfs", ABSENT_BDF, "target", "--initial-wait", "13")
    assert (status, out) == (2, "")
    assert err == ("pcispy: error: the board refused the target settings: initial latency "
                   "above 16 clocks\n")


@pytest.mark.parametrize("command", [["dma"], ["capture", "-o", "x.pcitrace"], ["irq"]],
                         ids=" ".join)
def test_interrupted_run_is_one_line_exit_130(no_board, monkeypatch, command):
    _feature_raises(monkeypatch, KeyboardInterrupt())
    status, out, err = run_cli("--sysfs", ABSENT_BDF, *command)
    assert (status, out, err) == (130, "", "pcispy: interrupted\n")


def test_verbose_shows_where_and_why(no_board, tmp_path):
    missing = tmp_path / "none.pcitrace"
    status, _, err = run_cli("decode", str(missing))
    assert status == 2 and err.count("\n") == 1
    status, _, err = run_cli("--verbose", "decode", str(missing))
    lines = err.splitlines()
    assert status == 2 and lines[0] == f"pcispy: error: cannot read {missing}: No such file " \
                                       "or directory"
    assert lines[1].startswith("pcispy: detail: PcispyError raised in read_trace (")
    assert lines[1].endswith(")") and "trace/file.py:" in lines[1]
    # The cause the one-line message replaced (`from None`) is shown.
    assert lines[2] == f"pcispy: detail: caused by FileNotFoundError: [Errno 2] No such file " \
                       f"or directory: '{missing}'"
    assert "Traceback" not in err


def test_unexpected_exception_is_a_bug_report_line_exit_1(no_board, monkeypatch):
    _feature_raises(monkeypatch, ZeroDivisionError("division by zero"))
    status, out, err = run_cli("--sysfs", ABSENT_BDF, "dma")
    assert status == EXIT_BUG == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("pcispy: internal error: ZeroDivisionError: division by zero. "
                          "This is a bug in pcispy; please report it to "
                          f"{cli.BUG_REPORTS} with the command line")
    status, _, err = run_cli("--sysfs", ABSENT_BDF, "--verbose", "dma")
    assert status == 1
    assert "\nTraceback (most recent call last):\n" in err
    assert err.rstrip().endswith("ZeroDivisionError: division by zero")


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_closed_pipe_in_process_ends_quietly():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["check", "--list-rules"], out=_ClosedPipe()) == 0
    assert err.getvalue() == ""


def test_closed_pipe_through_the_installed_command():
    # The reader is gone before pcispy writes (its start-up takes longer than closing).
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run([sys.executable, "-m", "pcispy.app.cli", "regs", "--header"],
                                stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert result.returncode == 0
    assert result.stderr == ""


# -- options that would do nothing, and outputs that cannot be written -----------------------

_DOES_NOTHING = "would do nothing"


@pytest.mark.parametrize("argv, says", [
    (["--baud", "9600", "info"], f"--baud applies to --uart only; without --uart it "
                                 f"{_DOES_NOTHING}"),
    (["--sim=rtc", "--uart-timeout", "1", "info"],
     f"--uart-timeout applies to --uart only; without --uart it {_DOES_NOTHING}"),
    (["--sysfs", ABSENT_BDF, "--baud", "9600", "info"],
     f"--baud applies to --uart only; without --uart it {_DOES_NOTHING}"),
    (["--uart", "/dev/ttyNONE", "--buffer", "0x7f000000:16M", "dma"],
     f"--buffer applies to --sysfs only; without --sysfs it {_DOES_NOTHING}"),
    (["--buffer", "0x7f000000:16M", "dma"],
     f"--buffer applies to --sysfs only; without --sysfs it {_DOES_NOTHING}"),
    (["--sysfs", ABSENT_BDF, "--bus-width", "64", "info"],
     "--bus-width sets the simulated system's bus; with --sysfs the board's own bus width "
     "applies"),
])
def test_option_that_would_do_nothing_is_refused(no_board, argv, says):
    status, out, err = run_cli(*argv)
    lines = err.splitlines()
    assert (status, out) == (2, "") and lines[0].startswith("usage: pcispy [-h]")
    assert lines[-1] == f"pcispy: error: {says}", err


def test_transport_settings_keep_their_defaults(no_board, monkeypatch):
    import pcispy.host.transports.uart
    import pcispy.sim.launcher
    from pcispy.host.errors import TransportError
    seen = []

    def uart_run(feature, arguments, device, baud, latency_s):
        seen.append((device, baud, latency_s))
        raise TransportError("stop here")

    def simulate(feature, arguments, config, **options):
        seen.append(config.width)
        raise TransportError("stop here")
    monkeypatch.setattr(pcispy.host.transports.uart, "run", uart_run)
    monkeypatch.setattr(pcispy.sim.launcher, "run_feature", simulate)
    assert run_cli("--uart", "dev", "info")[0] == 2
    assert run_cli("--uart", "dev", "--baud", "9600", "--uart-timeout", "2", "info")[0] == 2
    assert run_cli("info")[0] == 2
    assert run_cli("--bus-width", "64", "info")[0] == 2
    assert seen == [("dev", 115200, 0.25), ("dev", 9600, 2.0), 32, 64]


@pytest.mark.parametrize("options, says", [
    (["--mode", "summary", "--no-idle-compress"],
     "--no-idle-compress applies to --mode raw only; a summary capture stores one record per "
     "selected transaction"),
    (["--no-idle-compress"], "--no-idle-compress applies to --mode raw only; a summary "
                             "capture stores one record per selected transaction"),
    (["--mode", "summary", "--select"], "--select applies to --mode raw only; a summary "
                                        "capture stores one record per selected transaction"),
])
def test_raw_setting_of_a_summary_capture_is_refused(no_board, options, says):
    status, out, err = run_cli("capture", "-o", str(no_board / "x.pcitrace"), *options)
    lines = err.splitlines()
    assert (status, out) == (2, "") and lines[0].startswith("usage: pcispy capture ")
    assert lines[-1] == f"pcispy capture: error: {says}", err


@pytest.mark.parametrize("where, says", [
    ("", "it is a directory; give a file name in it"),
    ("missing/x.out", "there is no directory {dir}/missing"),
    ("file/x.out", "{dir}/file is not a directory"),
], ids=["directory", "missing directory", "file as directory"])
@pytest.mark.parametrize("command, option", [("capture", "-o"), ("decode", "-o"),
                                             ("irq", "--hist")])
def test_output_that_cannot_be_written_is_refused_before_the_work(no_board, command, option,
                                                                   where, says):
    (no_board / "file").write_text("")
    path = str(no_board / where) if where else str(no_board)
    inputs = [str(no_board / "in.pcitrace")] if command == "decode" else []
    # No simulator and no board are there (nor the decoded file): a run that got past
    # its arguments would fail in another way than this.
    status, out, err = run_cli(command, *inputs, option, path)
    lines = err.splitlines()
    assert (status, out) == (2, "") and lines[0].startswith(f"usage: pcispy {command} ")
    name = "-o/--output" if option == "-o" else option
    assert lines[-1] == (f"pcispy {command}: error: argument {name}: cannot write {path!r}: "
                         + says.format(dir=no_board)), err


def test_missing_serial_port_is_named_once(no_board):
    device = str(no_board / "ttyNONE")
    status, out, err = run_cli("--uart", device, "info")
    assert (status, out) == (2, "")
    assert err == f"pcispy: error: cannot open {device}: No such file or directory\n"
