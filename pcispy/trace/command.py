# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy decode``: a saved trace (``.pcitrace``, pcispy/trace/file.py) as a transaction
table, CSV, JSON, VCD or pcapng (pcispy/trace/export.py), with no board. The trace file and
the exports (numpy, the record layouts) load when a trace is decoded."""

import os
import sys

from pcispy.host.command import CliCommand, int_range, output_path
from pcispy.host.errors import PcispyError
from pcispy.trace.formats import BINARY_FORMATS, FORMATS

__all__ = ["DecodeCommand"]


class DecodeCommand(CliCommand):
    name = "decode"
    help = ("a saved trace (.pcitrace) as a transaction table, CSV, JSON, VCD or pcapng "
            "(Wireshark) (no board needed)")
    examples = ("pcispy decode rtc.pcitrace",
                "pcispy decode rtc.pcitrace --format csv -o rtc.csv",
                "pcispy decode rtc.pcitrace --format pcapng -o rtc.pcapng",
                "pcispy decode raw.pcitrace --format vcd -o raw.vcd && gtkwave raw.vcd")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the trace file")
        parser.add_argument("--format", choices=FORMATS, default="table",
                            help="output format (default: table); vcd needs a raw capture; "
                                 "pcapng is for Wireshark with contrib/wireshark/pcispy.lua "
                                 "(binary: to a file with -o, or a pipe)")
        parser.add_argument("-o", "--output", metavar="OUT", type=output_path,
                            help="write to this file instead of standard output")
        parser.add_argument("--latency-timer", type=int_range(0, 255), metavar="CLOCKS",
                            help="the masters' Latency Timer (0..255), to recognise "
                                 "latency-timer endings in a raw trace (default: from the "
                                 "trace)")
        parser.add_argument("--partial", action="store_true",
                            help="decode what can be: the records a partial readout holds "
                                 "(a readout that stopped; `pcispy readout --resume` "
                                 "completes it), and a damaged trace's records but the "
                                 "damaged ones and the end of a file cut short (a warning "
                                 "says how many were left out)")

    def run(self, args, out):
        # the trace file and the exports load when a trace is decoded (the module's docstring)
        from pcispy.trace.export import export, trace_json
        from pcispy.trace.file import read_trace
        # A large trace is memory-mapped and decoded a run of records at a time.
        trace = read_trace(args.file, partial=args.partial, skip_damaged=args.partial)
        if trace.partial is not None:
            read, total = trace.partial
            print(f"pcispy: warning: {args.file} is a partial readout: {read} of {total} "
                  "records decoded", file=sys.stderr)
        if trace.skipped:
            print(f"pcispy: warning: {args.file}: {_left_out(trace)}", file=sys.stderr)
        if args.json:
            return trace_json(trace, args.latency_timer)
        binary = args.format in BINARY_FORMATS
        if not args.output:
            # Bytes on a terminal are noise, and may be taken for escape sequences.
            if binary and hasattr(out, "isatty") and out.isatty():
                raise PcispyError(f"{args.format} is binary: not written to a terminal; give "
                                  f"an output file with -o FILE.{args.format} (or pipe it)")
            export(trace, args.format, out, args.latency_timer)
            return None
        try:
            with (open(args.output, "wb") if binary else
                  open(args.output, "w", newline="")) as file:
                try:
                    export(trace, args.format, file, args.latency_timer)
                except BaseException:
                    os.unlink(args.output)      # no partial export is left behind
                    raise
        except OSError as error:
            raise PcispyError(f"cannot write {args.output}: {error.strerror}") from None
        return None


def _left_out(trace):
    """What reading a damaged trace left out (:attr:`~pcispy.trace.records.Trace.skipped`),
    in one sentence."""
    skipped = trace.skipped
    parts = []
    if skipped.get("damaged"):
        first = skipped["first_damaged"]
        parts.append(f"{skipped['damaged']} damaged record"
                     f"{'' if skipped['damaged'] == 1 else 's'} skipped (the first: record "
                     f"{first['record']} at byte offset {first['offset']}, which {first['why']})")
    if skipped.get("cut_bytes"):
        parts.append(f"the file is cut short: its last {skipped['cut_bytes']} bytes, part of "
                     "a record, are left out")
    if skipped.get("missing"):
        parts.append(f"{skipped['missing']} records its readout holds are missing at the end")
    text = "; ".join(parts) + f"; decoded the {len(trace)} records that remain"
    if trace.mode.name == "RAW" and skipped.get("damaged"):
        text += (" (a raw record's time counts from the one before it: after a skipped one "
                 "times may be early by its delta, until the next timestamped record)")
    return text
