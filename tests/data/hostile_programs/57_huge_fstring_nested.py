# expect: limit
# needs: worker (an f-string of shared references: 10 GB built in one C call)
row = ['x' * 1000] * 1000
grid = [row] * 10000
message = f'{grid}'
