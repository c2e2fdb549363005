# pypto.program: nothing
# just a comment
