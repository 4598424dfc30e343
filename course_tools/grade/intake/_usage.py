"""The error of every wing for input the instructor must fix: arguments, tables, files, folders."""


class UsageError(Exception):
    """The grader cannot run with these arguments or files; the message says what to change."""
