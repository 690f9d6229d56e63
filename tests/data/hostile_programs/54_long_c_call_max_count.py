# expect: limit
# needs: worker (one C call that runs for minutes; no loop tick, no alarm)
names = ['a'] * 100000
best = max(sorted(sorted(names, key=names.count), key=names.count), key=names.count)
