# expect: refused
try:
    x = 1 / 0
except Exception as e:
    x = e.__traceback__
