// expected-error {{the module defines no functions}}
// A file holding only comments (an empty or cut-short upload) is not a program; the
// error is reported at the start of the file.
