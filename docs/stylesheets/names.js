// Inline code in a table cell that holds no space is a name (an option, a variable, a URL,
// a model): mark it so that oma.css keeps it on one line; code with spaces (a JSON shape)
// still wraps at its spaces. CSS alone cannot tell the two apart.
function omaMarkNames() {
  for (const code of document.querySelectorAll(".md-typeset td code, .md-typeset th code")) {
    if (!/\s/.test(code.textContent)) code.classList.add("oma-name");
  }
}
if (typeof document$ !== "undefined") {
  document$.subscribe(omaMarkNames);  // material's page-load stream (instant navigation too)
} else {
  document.addEventListener("DOMContentLoaded", omaMarkNames);
}
