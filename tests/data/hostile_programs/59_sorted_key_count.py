# expect: limit
# needs: worker (sorting by a quadratic C-level key)
names = [str(i) for i in range(200000)]  # ~2 minutes of index scans (50000 took 7.7 s here, inside the 10 s limit)
ordered = sorted(names, key=names.index)
