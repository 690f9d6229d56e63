# expect: refused
class Evil:
    pass
