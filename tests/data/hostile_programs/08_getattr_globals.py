# expect: refused
g = getattr(print, "__globals__")
