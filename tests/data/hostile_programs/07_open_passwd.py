# expect: refused
print(open("/etc/passwd").read())
