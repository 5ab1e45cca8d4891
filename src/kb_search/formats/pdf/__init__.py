"""PDF: `parse` (the parser the registry names: pages -> passages -> chunks) reads each page's
characters with pypdfium2 (`layout`), puts them in a reader's order (`reading_order`), drops
running heads, feet, page and line numbers (`furniture`), finds the title (`front`), headings
from the outline (`outline`), fonts and numbering (`structure`) and slide frames (`slides`), and
reads scanned pages with the optional OCR engine (`ocr`).

This face imports nothing: the parser loads only when the registry asks for it."""
