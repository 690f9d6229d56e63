# expect: limit
# needs: worker (sorting by a quadratic C-level key)
names = [str(i) for i in range(50000)]
ordered = sorted(names, key=names.index)
