"""Per-pair noise of the confirmations by process CPU, from the
corpus server's settle lines ("last rival/chosen R t T", 8 pairs each): the
standard error of the mean log ratio is |ln R / T|, one pair's standard
deviation that times sqrt(8), and the pairs a one-sided 5 % test needs to
take a rival 5 % cheaper with 80 % power, ((1.645 + 0.842) sd / ln(1/0.95))^2
(normal approximation), at 0.5 s per pair (two epochs of 0.25 s)."""
import json, math, re, sys

for path in sys.argv[1:]:
    for r in json.load(open(path)):
        for line in r["auto_log"]:
            m = re.search(r"last rival/chosen ([\d.]+) t (-?[\d.]+)", line)
            if not m or float(m[1]) == 0 or float(m[2]) == 0:
                continue
            ratio, t = float(m[1]), float(m[2])
            se = abs(math.log(ratio) / t)
            sd = se * math.sqrt(8)
            need = ((1.645 + 0.842) * sd / -math.log(0.95)) ** 2
            print(f"{r['service']:>13} {r['config']}: rival/chosen {ratio:.3f} t {t:+.2f} "
                  f"se {100 * se:.1f} % per-pair sd {100 * sd:.1f} % -> {need:.0f} pairs ({0.5 * need:.0f} s) for 5 %")
