# expect: refused
from subprocess import run
run(["ls"])
