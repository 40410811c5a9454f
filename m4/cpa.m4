# cpa's configure macros. A missing dependency names the Debian package
# that provides it; an optional part names the option that leaves it out.

# CPA_NEED_PKG(VAR, MODULES, DEBIAN-PACKAGE)
AC_DEFUN([CPA_NEED_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$2 not found: install the Debian package $3])])
])

# CPA_PART(NAME, WHAT) -- --with-NAME / --without-NAME for an optional
# part, on by default: sets cpa_with_NAME to yes or no. A part left out
# is in CPA_WITHOUT, which the test suites read to skip its tests.
AC_DEFUN([CPA_PART], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--without-$1], [build without $2])],
    [], [with_[]m4_translit([$1], [-], [_])=yes])
  cpa_with_[]m4_translit([$1], [-], [_])=$with_[]m4_translit([$1], [-], [_])
  AS_IF([test "x$cpa_with_[]m4_translit([$1], [-], [_])" = xno],
    [CPA_WITHOUT="$CPA_WITHOUT $1"])
])

# CPA_PART_PKG(NAME, WHAT, VAR, MODULES, DEBIAN-PACKAGE) -- an optional
# part that needs a pkg-config module: when it is on, the module must be
# there, and the error says how to build without it.
AC_DEFUN([CPA_PART_PKG], [
  CPA_PART([$1], [$2])
  AS_IF([test "x$cpa_with_[]m4_translit([$1], [-], [_])" != xno],
    [PKG_CHECK_MODULES([$3], [$4], [],
      [AC_MSG_ERROR([$4 not found: install the Debian package $5, or configure --without-$1 to build without $2])])])
  AM_CONDITIONAL(m4_toupper([WITH_]m4_translit([$1], [-], [_])),
    [test "x$cpa_with_[]m4_translit([$1], [-], [_])" != xno])
  AS_IF([test "x$cpa_with_[]m4_translit([$1], [-], [_])" != xno],
    [AC_DEFINE(m4_toupper([WITH_]m4_translit([$1], [-], [_])), [1], [Build with $2])],
    [AC_DEFINE(m4_toupper([WITH_]m4_translit([$1], [-], [_])), [0], [Build with $2])])
])
