"""What people read: terminal text, the live console view, HTML reports."""
