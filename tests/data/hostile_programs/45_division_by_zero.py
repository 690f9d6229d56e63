# expect: error
x = 1 / 0
