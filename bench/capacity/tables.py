"""The tables a reader sees first (capacity.py --light, and --brief): one
screen each, at most 10 columns, and a failed measurement said in words
(a footnote) rather than shown as 0 or nan."""
import math
import statistics

TAIL_CALLS = 5000  # p99.9 shown only where it rests on 5 calls or more


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def finite(x):
    return x is not None and math.isfinite(x)


def ratio(a, b, missing="—"):
    return f"{a / b:.2f}" if finite(a) and finite(b) and b else missing


def fmt(x, spec, missing="—"):
    return format(x, spec) if finite(x) else missing


def light_table(results, modes, title):
    """--light: each mode's latency, server CPU per call and peak RSS at one
    rate, medians over rounds, beside plain's."""
    plain = [r for r in results if r["mode"] == "plain" and r["ok"]]
    base = {k: med([r[k] for r in plain]) for k in ("p99_us", "server_cpu_us_per_call", "peak_rss_mib")}
    calls = med([r["ok"] for r in results])
    tail = calls >= TAIL_CALLS
    no_plain = "—¹" if not plain else "—"
    lines = [title, "", "| mode | p50 ms | p90 ms | p99 ms |" + (" p99.9 ms |" if tail else "")
             + " p99 / plain | server CPU us/call | / plain | peak RSS MiB | / plain |",
             "|---|---:|---:|---:|" + ("---:|" if tail else "") + "---:|---:|---:|---:|---:|"]
    notes, by_round = [], []
    for m in modes:
        rs = [r for r in results if r["mode"] == m]
        if not rs:
            continue
        failed = sum(r["failed"] + r["not_started"] for r in rs)
        if failed:
            notes.append(f"{m}: {failed} of {sum(r['sent'] for r in rs)} calls failed or were not started; "
                         "its latency is over the calls that succeeded.")
        rs = [r for r in rs if r["ok"]]
        if not rs:
            lines.append(f"| {m} | not measured: no call succeeded |")
            continue
        p = {k: med([r[k] for r in rs]) for k in ("p50_us", "p90_us", "p99_us", "p99.9_us",
                                                  "server_cpu_us_per_call", "peak_rss_mib")}
        lines.append(f"| {m} | {p['p50_us'] / 1000:.2f} | {p['p90_us'] / 1000:.2f} | {p['p99_us'] / 1000:.2f} |"
                     + (f" {p['p99.9_us'] / 1000:.2f} |" if tail else "")
                     + f" {ratio(p['p99_us'], base['p99_us'], no_plain)} | {fmt(p['server_cpu_us_per_call'], '.0f')} "
                     f"| {ratio(p['server_cpu_us_per_call'], base['server_cpu_us_per_call'], no_plain)} "
                     f"| {fmt(p['peak_rss_mib'], '.0f')} | {ratio(p['peak_rss_mib'], base['peak_rss_mib'], no_plain)} |")
        if m != "plain" and plain:
            by_round.append(m + " " + " ".join(f"{r['p99_us'] / q['p99_us']:.2f}" for r in rs for q in plain
                                               if q["round"] == r["round"]))
    if by_round:
        notes.append("p99 / plain by round: " + "; ".join(by_round) + ".")
    if not tail:
        notes.append(f"p99.9 not shown: {calls:.0f} calls a step, too few for it (it would be the worst call or "
                     f"two; {TAIL_CALLS} or more are needed).")
    if not plain:
        notes.append("¹ No ratio: plain did not run (or no call of it succeeded).")
    notes.append("Peak RSS: the server's high-water mark over the measured step.")
    return "\n".join(lines + [""] + notes)


def _capacity_cell(m, rs, notes):
    """(cell, confirmed median or nan, by-round text) for one mode's rounds."""
    ok = [r["cap_confirmed"] for r in rs if r["cap_confirmed"]]
    by_round = " ".join(f"{r['cap_confirmed']:.0f}" if r["cap_confirmed"] else "—" for r in rs)
    for r in rs:
        if r["cap_confirmed"]:
            continue
        tries = ", ".join(f"{c['rate']:.0f} (p99 {c['p99_us'] / 1000:.0f} ms"
                          + (f", {c['failed']} failed" if c["failed"] else "") + ")"
                          for c in r.get("confirm_steps", []))
        notes.append(f"{m}, round {r['round'] + 1}: " + (
            f"passed {r['cap_fixed']:.0f}/s in the search, then failed on fresh servers at {tries} calls/s: "
            "not confirmed." if r["cap_fixed"] else
            f"no rate passed (lowest tried {min(s['rate'] for s in r['steps']):.0f}/s): not measured."))
    if ok:
        mark = "*" if len(ok) < len(rs) else ""
        return f"{med(ok):.0f}{mark}", med(ok), by_round
    searched = max(r["cap_fixed"] for r in rs)
    if searched:
        return f"{searched:.0f}† (search only)", float("nan"), by_round
    return "not measured", float("nan"), by_round


def brief_table(results, rows, title, objective_ms, full_path):
    """--brief: capacity per mode on one screen; the full table is in full_path."""
    notes = []
    cells = {m: _capacity_cell(m, [r for r in results if r["mode"] == m], notes) for m in rows}
    plain_cap = cells["plain"][1] if "plain" in cells else float("nan")
    plain = rows.get("plain", {})
    missing = "—" if finite(plain_cap) else "—‡"
    lines = [title, "",
             f"| mode | capacity at p99 <= {objective_ms:g} ms (calls/s) | / plain | by round | unloaded p50 ms "
             "| server CPU at capacity (share of its core) | server CPU us/call there | / plain "
             "| peak RSS at capacity (MiB) | / plain |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for m, r in rows.items():
        cell, cap, by_round = cells[m]
        cpu, rss = r["server_cpu_us_per_call_at_cap"], r["peak_rss_at_cap_mib"]
        lines.append(
            f"| {m} | {cell} | {ratio(cap, plain_cap, missing)} | {by_round} | {r['unloaded_p50_ms']:.2f} "
            f"| {fmt(r['server_cpu_at_cap'], '.2f')} | {fmt(cpu, '.0f')} "
            f"| {ratio(cpu, plain.get('server_cpu_us_per_call_at_cap'), missing)} "
            f"| {fmt(rss, '.0f')} | {ratio(rss, plain.get('peak_rss_at_cap_mib'), missing)} |")
    lines += ["", f"Capacity: the highest rate whose p99 <= {objective_ms:g} ms held in the search and again on a "
              "fresh server (else 10 % lower, up to 3 times); the median over the rounds that confirmed one. "
              "The figures at capacity are from that confirming step; — where no step confirmed."]
    if any(c[0].endswith("*") for c in cells.values()):
        lines.append("* Confirmed in some rounds only (— in by round); the note below says what the others measured.")
    if any("†" in c[0] for c in cells.values()):
        lines.append("† Not confirmed in any round: the highest rate that passed in the search, shown instead.")
    if not finite(plain_cap):
        lines.append("‡ No ratio: plain has no confirmed capacity to divide by.")
    redone = sum(r["steps_client_starved"] + r["steps_stalled"] for r in rows.values())
    if redone:
        lines.append(f"{redone} steps were run again (the client fell behind, or the server stalled far from a "
                     "busy core); the full table counts them per mode.")
    lines += notes + [f"Every column (relative objective, 50 % load, client CPU): {full_path}"]
    return "\n".join(lines)
