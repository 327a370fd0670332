#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    from django.core.management import execute_from_command_line

    from governance.kernel import runtime

    runtime.prepare()
    try:
        execute_from_command_line(sys.argv)
    finally:
        runtime.release()


if __name__ == "__main__":
    main()
