from kb_search.cli import main

main()
