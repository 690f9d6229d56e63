# expect: refused
x = input("password: ")
