"""What the gateway's tests run against: fake orchestrator and retrieval services (``fakes``, with
its parts ``fake_*``) and the real app served in front of them (``harness``); a fake stack for the
`memex` commands (``cli_harness``); the web page's files and API answers (``web_page``). Test
support, not part of the package."""
