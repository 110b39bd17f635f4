"""The thin command line: parse arguments, call the library, print, exit.

May import: everything below it.
"""
