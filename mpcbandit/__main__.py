from mpcbandit.cli import main

main()
