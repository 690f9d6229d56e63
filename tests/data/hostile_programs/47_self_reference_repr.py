# expect: error
a = []
for i in range(50000):
    a = [a]
print(a)
