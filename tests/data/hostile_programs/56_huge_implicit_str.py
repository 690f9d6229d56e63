# expect: limit
# needs: worker (print builds a 10 GB string before any accounting)
row = ['x' * 100000] * 100000
print(row)
