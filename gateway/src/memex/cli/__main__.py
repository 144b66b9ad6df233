"""``python -m memex.cli`` is the same as the ``memex`` command."""

from memex.cli.main import main

if __name__ == "__main__":
    main()
