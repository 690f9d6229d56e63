# expect: limit
# needs: worker (hashing 2**80 shared tuple paths in one C call)
t = (1, 2)
for i in range(80):
    t = (t, t)
s = {t}
