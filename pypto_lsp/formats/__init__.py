"""The output formats: what a validation's results become for people and for CI (no torch at import).

``html_report`` (``validate --report``: the pass chart, error maps, task graphs in one offline
page), ``passchart`` (the pass chart's data, also for the editor), ``memmap_page`` (the memory map
page of ``pypto-lsp memmap``), ``taskgraph`` (the task graph's layout, also for the editor),
``ci_formats`` (JUnit XML, SARIF 2.1.0). The drawings themselves are ``report_assets/``.
"""
