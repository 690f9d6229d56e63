# expect: refused
m = __import__("os")
