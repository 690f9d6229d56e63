# expect: limit
# needs: worker (one C call that runs for minutes; no loop tick, no alarm)
names = ['a'] * 1000000  # each sort counts 10^12 elements: minutes on any CPU (10^5 took 7 s here, inside the 10 s limit)
best = max(sorted(sorted(names, key=names.count), key=names.count), key=names.count)
