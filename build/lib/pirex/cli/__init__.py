"""The pirex command line: main.py is the click group and the console script's main(); each other module holds a
group of commands (run, fleet, results, reproduce, artifact, images) and common.py what several of them share."""
