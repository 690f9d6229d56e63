# expect: refused
T = type("T", (), {})
