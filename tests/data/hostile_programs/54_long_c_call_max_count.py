# expect: limit
# needs: worker (one C call that runs for minutes; no loop tick, no alarm)
names = ['a'] * 100000
best = max(names, key=names.count)
