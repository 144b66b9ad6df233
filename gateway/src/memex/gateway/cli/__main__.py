"""``python -m memex.gateway.cli`` is the same as the ``memex`` command."""

from memex.gateway.cli.main import main

if __name__ == "__main__":
    main()
