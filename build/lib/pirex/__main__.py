from pirex.cli.main import main

main()
