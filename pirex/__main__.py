from pirex.cli import main

main()
