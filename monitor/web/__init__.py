"""What the faces served over HTTP share (the JSON API's handlers, the dashboard; the public
pages): the keys of the application's resources (``keys.py``) and the session cookie
(``cookie.py``). A floor of its own between the domain layer and the faces, so that a face uses
them without importing another face's handlers."""
