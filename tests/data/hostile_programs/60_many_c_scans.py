# expect: limit
# many C-level scans, each short: the loop tick sees the clock
big = ["y"] * 100000
hits = [big.count("x") for i in range(99999)]
