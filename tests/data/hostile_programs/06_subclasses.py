# expect: refused
for c in object.__subclasses__():
    print(c)
