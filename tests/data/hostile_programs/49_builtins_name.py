# expect: refused
b = __builtins__
