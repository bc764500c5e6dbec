"""Element trees in the host's rendering (``- role "name" = "value" [state]… [id]``), shaped
like what the host renders for these real apps; the desktop tests also use live ones."""

EDITOR = """\
- window "Untitled 1 - Mousepad" [1]
  - menuBar [2]
    - menuItem "File" [actions: click] [3]
    - menuItem "Edit" [actions: click] [4]
  - scrollArea [5]
    - text [focused] [editable] [6]
  - statusBar "Line 1, Column 1" [7]"""

DELETE_DIALOG = """\
- window "Files" [1]
  - alert "Permanently delete \\"notes.txt\\"?" [modal] [2]
    - label "If you delete an item, it will be permanently lost." [3]
    - button "Cancel" [actions: click] [4]
    - button "Delete" [actions: click] [5]
  - toolbar [6]
    - button "Remove from list" [actions: click] [7]"""

PASSWORD_DIALOG = """\
- dialog "Type your password" [1]
  - label "Type your password" [2]
  - passwordField [focused] [secure] [3]
  - button "Cancel" [actions: click] [4]
  - button "OK" [actions: click] [5]"""

BROWSER_FORM = """\
- window "Contact - Chromium" [1]
  - document "Contact" [2]
    - form [3]
      - textField "Email" = "" [focused] [4]
      - textField "Message" = "" [5]
      - button "Send message" [actions: click] [6]
    - link "Privacy" [actions: jump] [7]"""

EMPTY = ""
